"""Judge runners: the client that calls one, the slopjudge-agent runner, and its harnesses."""
