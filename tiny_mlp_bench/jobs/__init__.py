"""The timed jobs, one file per command: run (a training run), sweep (a device's crossover sweep) and probe (a
framework's fixed costs on a device), each with its options, its measurement and its command; beside them what they
share: their identity and files (identity), their options' declarations (options), the rounds a study runs them in
(rounds) and the envelope every job runs in (envelope)."""
