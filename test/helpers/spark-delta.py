"""Apache Spark with Delta Lake (PyPI's pyspark and delta-spark; the jars from Maven Central): the reference reader
and writer of the Delta protocol, for the conformance suite.

Usage: spark-delta.py COMMANDS_JSON. Each command is {"op": "read", "path": P, "version": V?} (the table's rows,
sorted by their first column, and its schema), {"op": "history", "path": P} (each version's operation) or
{"op": "optimize", "path": P} (Spark's OPTIMIZE: the table's files compacted by another engine) or {"op": "sql", "sql": S}
(a statement of Spark's own: a DELETE writing deletion vectors, a table made by Spark). Prints a JSON list of the
answers on the last line.
"""
import json
import os
import sys

from delta import configure_spark_with_delta_pip
from pyspark.sql import SparkSession

builder = (
    SparkSession.builder.master("local[1]")
    .appName("delta-conformance")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
)
spark = configure_spark_with_delta_pip(builder).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")

answers = []
for c in json.loads(sys.argv[1]):
    if c["op"] == "sql":
        spark.sql(c["sql"]).collect()
        answers.append(True)
        continue
    path = c["path"]
    if c["op"] == "read":
        reader = spark.read.format("delta")
        if c.get("version") is not None:
            reader = reader.option("versionAsOf", c["version"])
        df = reader.load(path)
        rows = [r.asDict() for r in df.collect()]
        first = df.schema.names[0]
        rows.sort(key=lambda r: str(r[first]))
        answers.append({"schema": [[f.name, f.dataType.simpleString()] for f in df.schema.fields], "rows": rows})
    elif c["op"] == "history":
        h = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
        answers.append(sorted([[r["version"], r["operation"]] for r in h]))
    elif c["op"] == "optimize":
        spark.sql(f"OPTIMIZE delta.`{path}`").collect()
        answers.append(True)
sys.stdout.write("\n" + json.dumps(answers, default=str) + "\n")
sys.stdout.flush()
os._exit(0)
