# The tidy timings table and the Markdown report: a pure function of the run records.
rule render_report:
    input:
        records=get_run_records(),
        sweeps=get_sweeps(),
    output:
        report="results/report.md",
        timings="results/timings.parquet",
        plot="results/report/timings.png",
        crossover_plot="results/report/crossover.png",
    log:
        "logs/render_report/render_report.log",
    container:
        config["images"]["torch"]
    params:
        python=PYTHON,
        script=SCRIPTS / "render_report.py",
    shell:
        "{params.python} {params.script} --report {output.report} --timings {output.timings}"
        " --plot {output.plot} --crossover-plot {output.crossover_plot}"
        " --sweeps {input.sweeps} -- {input.records} > {log} 2>&1"
