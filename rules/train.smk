# One timed training run per job. Timed jobs each hold the single timed_slot (capped at 1
# in profiles/default), so no two of them ever share the machine; other rules run freely.


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
    params:
        args=get_train_args,
        script=SCRIPTS / "train_torch.py",
    shell:
        "python {params.script} --dataset {input.dataset} {params.args}"
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
    params:
        args=get_train_args,
        script=SCRIPTS / "train_keras.py",
    shell:
        "python {params.script} --dataset {input.dataset} {params.args}"
        " --output {output.record} > {log} 2>&1"
