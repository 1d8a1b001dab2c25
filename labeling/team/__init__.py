"""Team work: members and roles, assignments, agreement, adjudication, reviewer quality."""
