"""The run-time floor below operations: spend (ledger, budget), turn lifecycle, signal bus."""
