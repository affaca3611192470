"""What both doors share in serving requests: the request's record, logs, tracing and metrics, access
and guards in front of the doors, subscriber slots and event feeds, the bounded HTTP protocol and the stop."""
