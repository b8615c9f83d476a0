"""Pure decisions of a drain, for the agent's self-drain and the controller's drain controller
alike: which pods a drain evicts and which it leaves (``pods``), when a failing drain is tried
again and when it is reported as failing (``cadence``), what is said about pods that block it
(``report``), and a pool's drain settings (``settings``). No I/O."""
