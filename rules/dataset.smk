# The question's dataset, as one deterministic Parquet file.
rule make_dataset:
    output:
        dataset=identity.DATASET,
    log:
        "logs/make_dataset/make_dataset.log",
    container:
        get_image
    params:
        run=get_launcher,
        seed=config["seed"],
        n_rows=config["n_rows"],
        script=program("make_dataset.py"),
    shell:
        "exec {params.run} {params.script} --seed {params.seed} --n-rows {params.n_rows}"
        " --output {output.dataset} > {log} 2>&1"
