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


# The same run on another stack (the config's stacks, the era study): this machine's Python runs the era runner on the
# host or in the stack's image and writes the record (tiny_mlp_bench/jobs/run.py, StackRun), after the stack's warm-up.
rule train_stack:
    input:
        dataset=identity.DATASET,
        warm_up=identity.OUTPUTS["warm_up_stack"],
    output:
        record=report(
            identity.OUTPUTS["train_stack"],
            caption="captions/run_record.rst",
            category="3. Run records",
            subcategory="{framework}-{device}",
            labels={"variant": "{variant}", "repeat": "{repeat}", "stack": "{stack}"},
        ),
    log:
        identity.log_pattern("train_stack"),
    priority: run_order_priority("train_stack")
    # Today's image for the job that starts the stack's (with Docker or Podman, on the host: check_stack_images).
    container:
        get_image
    threads: get_cpu_threads()
    resources:
        **TIMED_RESOURCES,
    params:
        run=STACK_LAUNCHER,
        args=get_stack_train_args,
        script=program("train.py"),
    shell:
        "exec {params.run} {params.script} {params.args} > {log} 2>&1"


# A stack's untimed warm-up, once per framework before its first timed run: the image's files read into the page
# cache and the framework imported once, as a user's machine has them after a first run. Its record is not a run's.
rule warm_up_stack:
    input:
        dataset=identity.DATASET,
    output:
        record=identity.OUTPUTS["warm_up_stack"],
    log:
        identity.log_pattern("warm_up_stack"),
    priority: 0
    container:
        get_image
    threads: get_cpu_threads()
    resources:
        **TIMED_RESOURCES,
    params:
        run=STACK_LAUNCHER,
        args=get_warm_up_args,
        script=program("train.py"),
    shell:
        "exec {params.run} {params.script} {params.args} > {log} 2>&1"


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
