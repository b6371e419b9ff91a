"""Experiments: one spec (YAML) for the paper's results on either backend (ns-3 simulation or
Mininet + BMv2 emulation), with sweeps, repetitions, mean and 95 % CI, and tables and figures
beside the paper's numbers. ``olaf experiment SPEC --backend ns3|mininet``; docs/experiments.md.
"""
