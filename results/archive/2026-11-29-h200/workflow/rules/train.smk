# One timed training run per job. Timed jobs each hold the single timed_slot (capped at 1
# in profiles/default), so no two of them ever share the machine; other rules run freely.
# cuda jobs ask a cluster for one GPU in the style config["gpu_request"] names.


rule train_torch:
    input:
        dataset=rules.make_dataset.output.dataset,
    output:
        record="results/runs/torch-{device}-{variant}-{repeat}.json",
    log:
        "logs/train_torch/{device}-{variant}-{repeat}.log",
    container:
        config["images"]["torch"]
    threads: get_cpu_threads()
    resources:
        timed_slot=1,
        gpu=get_gpus,
        gres=get_gres,
    params:
        python=PYTHON,
        args=get_train_args,
        script=SCRIPTS / "train_torch.py",
    shell:
        "{params.python} {params.script} --dataset {input.dataset} {params.args}"
        " --output {output.record} > {log} 2>&1"


rule train_keras:
    input:
        dataset=rules.make_dataset.output.dataset,
    output:
        record="results/runs/keras-{device}-{variant}-{repeat}.json",
    log:
        "logs/train_keras/{device}-{variant}-{repeat}.log",
    container:
        config["images"]["keras"]
    threads: get_cpu_threads()
    resources:
        timed_slot=1,
        gpu=get_gpus,
        gres=get_gres,
    params:
        python=PYTHON,
        args=get_train_args,
        script=SCRIPTS / "train_keras.py",
    shell:
        "{params.python} {params.script} --dataset {input.dataset} {params.args}"
        " --output {output.record} > {log} 2>&1"


rule train_numpy:
    input:
        dataset=rules.make_dataset.output.dataset,
    output:
        record="results/runs/numpy-{device}-{variant}-{repeat}.json",
    log:
        "logs/train_numpy/{device}-{variant}-{repeat}.log",
    container:
        config["images"]["torch"]
    threads: get_cpu_threads()
    resources:
        timed_slot=1,
        gpu=get_gpus,
        gres=get_gres,
    params:
        python=PYTHON,
        args=get_train_args,
        script=SCRIPTS / "train_numpy.py",
    shell:
        "{params.python} {params.script} --dataset {input.dataset} {params.args}"
        " --output {output.record} > {log} 2>&1"


# The crossover map: per-step time of torch sync_free over batch size x width on one device.
rule sweep_crossover:
    output:
        sweep="results/sweep/{device}.json",
    log:
        "logs/sweep_crossover/{device}.log",
    container:
        config["images"]["torch"]
    threads: get_cpu_threads()
    resources:
        timed_slot=1,
        gpu=get_gpus,
        gres=get_gres,
    params:
        python=PYTHON,
        batch_sizes=",".join(map(str, config["sweep"]["batch_sizes"])),
        widths=",".join(map(str, config["sweep"]["hidden_units"])),
        steps=config["sweep"]["steps"],
        require_gpu="--require-gpu" if config["require_gpu"] else "",
        script=SCRIPTS / "sweep.py",
    shell:
        "{params.python} {params.script} --device {wildcards.device} --threads {threads}"
        " --batch-sizes {params.batch_sizes} --hidden-units {params.widths}"
        " --steps {params.steps} {params.require_gpu} --output {output.sweep} > {log} 2>&1"
