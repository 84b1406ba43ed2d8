"""tiny-mlp-bench: the library behind the programs in scripts/.

catalogue (frameworks and variants), timing (the one clock), driver and backends (training runs),
records (run and sweep records), dataset, environment, crossover (the sweep), config_check, and
report (the report's model and its renderers).
"""
