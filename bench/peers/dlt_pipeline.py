"""A dlt pipeline for the peer bench (bench/peers.ts), written as a dlt user writes one: a resource that pages the
GraphQL document its user would send (edges { node }, pageInfo { hasNextPage endCursor }) with requests, loaded as
JSON lines into a local folder by dlt's filesystem destination. Arguments: the config file (the tap's: api_url, token,
page_size, connection, query), the output folder, dlt's working folder."""

from __future__ import annotations

import json
import sys

import dlt
import requests


def main(config_file: str, out_dir: str, work_dir: str) -> None:
    with open(config_file) as f:
        config = json.load(f)
    connection = config["connection"]

    @dlt.resource(name="records", primary_key="id", write_disposition="replace")
    def records():
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {config['token']}"
        after = None
        while True:
            r = session.post(
                config["api_url"],
                json={"query": config["query"], "variables": {"first": config["page_size"], "after": after}},
            )
            r.raise_for_status()
            conn = r.json()["data"][connection]
            yield [edge["node"] for edge in conn["edges"]]
            if not conn["pageInfo"]["hasNextPage"]:
                return
            after = conn["pageInfo"]["endCursor"]

    pipeline = dlt.pipeline(
        pipeline_name="peers_bench",
        pipelines_dir=work_dir,
        destination=dlt.destinations.filesystem(bucket_url=out_dir),
        dataset_name="tenant",
    )
    pipeline.run(records(), loader_file_format="jsonl")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
