# The timed rules: a training run, a device's crossover sweep, a framework's probe of fixed costs.


rule train:
    input:
        dataset=identity.DATASET,
        compiled_first=get_compiled_first,
    output:
        record=report(
            identity.OUTPUTS["train"],
            caption="captions/run_record.rst",
            category="3. Run records",
            subcategory="{framework}-{device}",
            labels={"variant": "{variant}", "repeat": "{repeat}"},
        ),
    log:
        identity.log_pattern("train"),
    priority: run_order_priority("train")
    container:
        get_image
    threads: get_cpu_threads()
    resources:
        **TIMED_RESOURCES,
    params:
        run=get_launcher,
        args=get_train_args,
        script=program("train.py"),
    shell:
        "exec {params.run} {params.script} {params.args} > {log} 2>&1"


# The same run beside one busy core (the config's conditions): a rule of its own, whose file name says so.
use rule train as train_busy with:
    input:
        dataset=identity.DATASET,
        compiled_first=get_busy_compiled_first,
    output:
        record=report(
            identity.OUTPUTS["train_busy"],
            caption="captions/run_record.rst",
            category="3. Run records",
            subcategory="{framework}-{device}",
            labels={"variant": "{variant}", "repeat": "{repeat}", "condition": "busy"},
        ),
    log:
        identity.log_pattern("train_busy"),
    priority: run_order_priority("train_busy")
    params:
        args=get_busy_train_args,


# The crossover map: per-step time of torch sync_free over batch size x width on one device.
rule sweep_crossover:
    output:
        sweep=report(
            identity.OUTPUTS["sweep_crossover"],
            caption="captions/sweep.rst",
            category="4. Sweeps and probes",
        ),
    log:
        identity.log_pattern("sweep_crossover"),
    priority: run_order_priority("sweep_crossover")
    container:
        get_image
    threads: get_cpu_threads()
    resources:
        **TIMED_RESOURCES,
    params:
        run=get_launcher,
        args=get_sweep_args,
        script=program("sweep_crossover.py"),
    shell:
        "exec {params.run} {params.script} {params.args} > {log} 2>&1"


# The fixed costs a tiny step pays on one device, measured where the runs are, to explain the ladder.
rule probe_fixed_costs:
    input:
        dataset=rules.make_dataset.output.dataset,
    output:
        probe=report(
            identity.OUTPUTS["probe_fixed_costs"],
            caption="captions/probe.rst",
            category="4. Sweeps and probes",
        ),
    log:
        identity.log_pattern("probe_fixed_costs"),
    priority: run_order_priority("probe_fixed_costs")
    container:
        get_image
    threads: get_cpu_threads()
    resources:
        **TIMED_RESOURCES,
    params:
        run=get_launcher,
        args=get_probe_args,
        script=program("probe_fixed_costs.py"),
    shell:
        "exec {params.run} {params.script} {params.args} > {log} 2>&1"
