"""The config engine. Pure: parse, validate, diff, reconcile, plan.

Contract: no module in this package performs I/O (no files, processes, sockets,
clocks used for decisions, environment). Inputs are bytes, strings and
dataclasses; outputs are frozen dataclasses. Host and cluster adapters execute
what is planned here. import-linter forbids the I/O modules in this package.
"""
