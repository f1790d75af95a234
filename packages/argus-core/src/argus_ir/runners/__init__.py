"""Runners: the streaming file pipeline, Ray Data, and the adapters' shared record path."""
