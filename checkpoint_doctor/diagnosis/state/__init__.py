"""State: the state store chain each stateful operator restores from, whether the query is
stateful at all, and Spark's texts for each state failure per line."""
