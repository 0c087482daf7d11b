"""A path convertor the console's and the API's routes share (registered on import)."""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor


class RestOfPath(Convertor[str]):
    """The rest of the path, any character included: a stream id may hold "/" (sent as is
    or as %2F, decoded before routing) and line breaks, which Starlette's ``path``
    (``.*``) does not match. Routes name it ``{stream_id:rest}``."""

    regex = "[\\s\\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("rest", RestOfPath())
