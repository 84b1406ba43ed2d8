# The timings table, report and the report's numbers (numbers.json): a pure function of the run records and the quoted GPU and busy-core
# archives (gpu_answer_archive, busy_answer_archive). Report, charts and records are also items of
# `snakemake --report`, captioned in captions/.
rule render_report:
    input:
        records=get_run_records(),
        sweeps=get_sweeps(),
        probes=get_probes(),
        gpu_archive=get_gpu_archive_records,
        busy_archives=get_busy_archive_records,
    output:
        report=report(
            "results/report.md", caption="captions/report_md.rst", category="1. Report"
        ),
        timings="results/timings.parquet",
        headline=report(
            "results/headline.csv",
            caption="captions/headline_csv.rst",
            category="1. Report",
        ),
        plot=report(
            "results/report/timings.png",
            caption="captions/timings_png.rst",
            category="2. Charts",
        ),
        ladder_plot=report(
            "results/report/ladder.png",
            caption="captions/ladder_png.rst",
            category="2. Charts",
        ),
        crossover_plot=report(
            "results/report/crossover.png",
            caption="captions/crossover_png.rst",
            category="2. Charts",
        ),
        breakdown_plot=report(
            "results/report/breakdown.png",
            caption="captions/breakdown_png.rst",
            category="2. Charts",
        ),
        numbers="results/report/numbers.json",
        html=report(
            "results/report/report.html",
            caption="captions/report_html.rst",
            category="1. Report",
        ),
    log:
        "logs/render_report/render_report.log",
    container:
        get_image
    params:
        run=get_launcher,
        script=program("render_report.py"),
        gpu_archive=get_gpu_archive_option,
        busy_archives=get_busy_archive_option,
    shell:
        "exec {params.run} {params.script} --report {output.report} --timings {output.timings}"
        " --headline {output.headline}"
        " --plot {output.plot} --ladder-plot {output.ladder_plot} --crossover-plot {output.crossover_plot}"
        " --breakdown-plot {output.breakdown_plot}"
        " --numbers {output.numbers} --html {output.html} {params.gpu_archive} {params.busy_archives}"
        " --sweeps {input.sweeps} --probes {input.probes} -- {input.records} > {log} 2>&1"


# The config as run, defaults filled in, for the archive; a changed value reruns this rule alone (a params change).
localrules:
    config_as_run,


rule config_as_run:
    output:
        config="results/config.yaml",
    log:
        "logs/config_as_run/config_as_run.log",
    params:
        config=config,
    run:
        write_config_as_run(output.config, params.config, log[0])
