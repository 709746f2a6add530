"""A dlt pipeline for the peer bench (bench/peers.ts), written as a dlt user writes one: a resource that pages the
GraphQL document its user would send (edges, pageInfo { hasNextPage endCursor }) with requests, loaded as JSON lines
into a local folder by dlt's filesystem destination. Arguments: api_url out_dir work_dir page_size; the bearer token
in PEER_TOKEN."""

from __future__ import annotations

import os
import sys

import dlt
import requests

QUERY = """
query Readings($first: Int, $after: Cursor) {
  allReadings(first: $first, after: $after) {
    edges { node { nodeId id sensor value updatedAt } }
    pageInfo { hasNextPage endCursor }
  }
}
"""


def main(api_url: str, out_dir: str, work_dir: str, page_size: int) -> None:
    token = os.environ["PEER_TOKEN"]
    @dlt.resource(name="readings", primary_key="id", write_disposition="replace")
    def readings():
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        after = None
        while True:
            r = session.post(api_url, json={"query": QUERY, "variables": {"first": page_size, "after": after}})
            r.raise_for_status()
            conn = r.json()["data"]["allReadings"]
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
    pipeline.run(readings(), loader_file_format="jsonl")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
