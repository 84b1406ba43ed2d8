# The tidy timings table and the Markdown report: a pure function of the run records.
rule render_report:
    input:
        records=get_run_records(),
        sweeps=get_sweeps(),
        probes=get_probes(),
    output:
        report="results/report.md",
        timings="results/timings.parquet",
        plot="results/report/timings.png",
        ladder_plot="results/report/ladder.png",
        crossover_plot="results/report/crossover.png",
    log:
        "logs/render_report/render_report.log",
    container:
        get_image
    params:
        run=get_launcher,
        script=SCRIPTS / "render_report.py",
    shell:
        "{params.run} {params.script} --report {output.report} --timings {output.timings}"
        " --plot {output.plot} --ladder-plot {output.ladder_plot} --crossover-plot {output.crossover_plot}"
        " --sweeps {input.sweeps} --probes {input.probes} -- {input.records} > {log} 2>&1"
