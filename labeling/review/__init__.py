"""The labeling screen: what it reads, the queue, highlighting, label and claim writes."""
