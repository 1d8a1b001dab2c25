"""Automated labelers (LLM judges): the protocol, judge runs and their grading."""
