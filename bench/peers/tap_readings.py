"""A Singer tap for the peer bench (bench/peers.ts), written as a Meltano Singer SDK user writes one: a GraphQLStream
with the document its user would send (edges, pageInfo { hasNextPage endCursor }) and a paginator that follows
hasNextPage. Config: {"api_url", "token", "page_size"}. Singer messages on stdout."""

from __future__ import annotations

import sys

from singer_sdk import Tap
from singer_sdk import typing as th
from singer_sdk.pagination import BaseAPIPaginator
from singer_sdk.streams import GraphQLStream


class CursorPaginator(BaseAPIPaginator):
    def get_next(self, response):
        info = response.json()["data"]["allReadings"]["pageInfo"]
        return info["endCursor"] if info["hasNextPage"] else None


class Readings(GraphQLStream):
    name = "allReadings"
    primary_keys = ("id",)
    records_jsonpath = "$.data.allReadings.edges[*].node"
    schema = th.PropertiesList(
        th.Property("nodeId", th.StringType),
        th.Property("id", th.StringType),
        th.Property("sensor", th.StringType),
        th.Property("value", th.NumberType),
        th.Property("updatedAt", th.DateTimeType),
    ).to_dict()
    query = """
        query Readings($first: Int, $after: Cursor) {
          allReadings(first: $first, after: $after) {
            edges { node { nodeId id sensor value updatedAt } }
            pageInfo { hasNextPage endCursor }
          }
        }
    """

    @property
    def url_base(self) -> str:
        return self.config["api_url"]

    @property
    def http_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.config['token']}"}

    def get_new_paginator(self):
        return CursorPaginator(None)

    def get_url_params(self, context, next_page_token):
        return {"first": self.config.get("page_size", 100), "after": next_page_token}


class TapReadings(Tap):
    name = "tap-readings"
    config_jsonschema = th.PropertiesList(
        th.Property("api_url", th.StringType, required=True),
        th.Property("token", th.StringType, required=True, secret=True),
        th.Property("page_size", th.IntegerType),
    ).to_dict()

    def discover_streams(self):
        return [Readings(self)]


if __name__ == "__main__":
    sys.exit(TapReadings.cli())
