# tiny-mlp-bench: why is a tiny MLP slower on the GPU than the CPU, and in PyTorch than Keras?
# Dataset -> timed jobs per framework/device/variant/repeat -> a Markdown report. Run: snakemake --cores all.


import os


# Found beside this file, so that `--directory` can put a study in a folder of its own (as `make quick` does).
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
