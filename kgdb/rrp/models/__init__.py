"""RRP's networks: the relation-path planner (a decoder), the path ranker and the structural reasoner."""
