"""Nodes and first-fit over them: the cluster state (which devices and claims are in use where), the
placement result types, first-fit placement of pods node by node, and the placement checker.
"""
