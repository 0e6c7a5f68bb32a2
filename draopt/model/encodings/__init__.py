"""CP-SAT encodings, one module per constraint family: each holds the rule for one device,
pool, counter set or constraint (`limit_device`, `limit_shares`, `limit_pool`,
`limit_counter_set`, `limit_match`, `limit_distinct`), which the one model builder
(`draopt.model.placement.build`) calls for `place` and `allocate` alike.
"""
