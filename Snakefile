# tiny-mlp-bench: why is a tiny MLP slower on the GPU than on the CPU, and slower in
# PyTorch than in Keras? Dataset -> one timed job per framework/device/variant/repeat
# -> a Markdown report. Run: snakemake --cores all (the profiles/default profile applies).


import os


# Found beside this file, so that `--directory` can put a study (its results, logs and Snakemake state)
# in a folder of its own, as `make quick` does.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "rules/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/dataset.smk"
include: "rules/train.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        get_final_output(),
