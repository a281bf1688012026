"""Loading rules: the rule schema, the loader, the check graph, settings, the rules cache."""
