# The seed question's dataset, as one deterministic Parquet file.
rule make_dataset:
    output:
        dataset="results/data/dataset.parquet",
    log:
        "logs/make_dataset/make_dataset.log",
    container:
        config["images"]["torch"]
    params:
        python=PYTHON,
        seed=config["seed"],
        n_rows=config["n_rows"],
        script=SCRIPTS / "dataset.py",
    shell:
        "{params.python} {params.script} --seed {params.seed} --n-rows {params.n_rows}"
        " --output {output.dataset} > {log} 2>&1"
