"""Studies: trace simulation (simulate, trace, online_batch, the FGD paper's protocol and policies),
capacity planning (planning), what-if sweeps (sweep) and the compare report (report).
"""
