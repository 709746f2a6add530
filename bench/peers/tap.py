"""A Singer tap for the peer bench (bench/peers.ts), written as a Meltano Singer SDK user writes one: a GraphQLStream
with the document its user would send (edges { node }, pageInfo { hasNextPage endCursor }) and a paginator that
follows hasNextPage. Config: {"api_url", "token", "page_size", "connection", "query", "properties"} — the connection's
root field, the document, the records' JSON schema properties. Singer messages on stdout."""

from __future__ import annotations

import sys

from singer_sdk import Tap
from singer_sdk import typing as th
from singer_sdk.pagination import BaseAPIPaginator
from singer_sdk.streams import GraphQLStream


class CursorPaginator(BaseAPIPaginator):
    def __init__(self, connection: str):
        super().__init__(None)
        self.connection = connection

    def get_next(self, response):
        info = response.json()["data"][self.connection]["pageInfo"]
        return info["endCursor"] if info["hasNextPage"] else None


class Records(GraphQLStream):
    primary_keys = ("id",)

    def __init__(self, tap):
        super().__init__(
            tap,
            name=tap.config["connection"],
            schema={"type": "object", "properties": tap.config["properties"]},
        )

    @property
    def records_jsonpath(self) -> str:
        return f"$.data.{self.name}.edges[*].node"

    @property
    def query(self) -> str:
        return self.config["query"]

    @property
    def url_base(self) -> str:
        return self.config["api_url"]

    @property
    def http_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.config['token']}"}

    def get_new_paginator(self):
        return CursorPaginator(self.name)

    def get_url_params(self, context, next_page_token):
        return {"first": self.config.get("page_size", 100), "after": next_page_token}


class TapRecords(Tap):
    name = "tap-peers-bench"
    config_jsonschema = th.PropertiesList(
        th.Property("api_url", th.StringType, required=True),
        th.Property("token", th.StringType, required=True, secret=True),
        th.Property("page_size", th.IntegerType),
        th.Property("connection", th.StringType, required=True),
        th.Property("query", th.StringType, required=True),
        th.Property("properties", th.ObjectType(), required=True),
    ).to_dict()

    def discover_streams(self):
        return [Records(self)]


if __name__ == "__main__":
    sys.exit(TapRecords.cli())
