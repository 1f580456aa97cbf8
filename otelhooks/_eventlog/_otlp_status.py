"""OTLP/HTTP failure answers: a ``google.rpc.Status`` in the encoding the request used.

opentelemetry-proto's ``docs/specification.md`` ("Failures"): the body of every 4xx and 5xx
answer is a ``Status`` message, and the answer has the request's own Content-Type, so a
protobuf client gets protobuf and a JSON client the JSON mapping of the same message. A 400
SHOULD carry a ``google.rpc.BadRequest`` in ``details``. otelhooks adds a
``google.rpc.ErrorInfo`` (domain ``otelhooks``) whose ``reason`` names the failure
(``QUEUE_FULL``, ``BAD_REQUEST``...), so a client can tell them apart without parsing text.
``Status.code`` is the gRPC code that matches the HTTP status (the spec lets clients ignore it).
"""

from __future__ import annotations

import json

__all__ = ["JSON", "PROTOBUF", "answer_type", "otlp_error"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# google.rpc.Code for the HTTP statuses the receivers answer (the gRPC/HTTP mapping in
# googleapis' code.proto)
_GRPC_CODES = {
    400: 3,  # INVALID_ARGUMENT
    401: 16,  # UNAUTHENTICATED
    403: 7,  # PERMISSION_DENIED
    404: 5,  # NOT_FOUND
    405: 12,  # UNIMPLEMENTED
    408: 4,  # DEADLINE_EXCEEDED
    413: 8,  # RESOURCE_EXHAUSTED
    415: 3,  # INVALID_ARGUMENT
    429: 8,  # RESOURCE_EXHAUSTED
    500: 13,  # INTERNAL
    503: 14,  # UNAVAILABLE
}


def answer_type(content_type: str | None) -> str:
    """The Content-Type a failure answer has: protobuf for a protobuf request, else JSON."""
    media = (content_type or "").split(";")[0].strip().lower()
    return PROTOBUF if media == PROTOBUF else JSON


def otlp_error(content_type: str, status: int, reason: str, message: str) -> bytes:
    """The body of an OTLP/HTTP failure answer with ``status``, encoded as ``content_type``.

    Args:
        content_type: the answer's type (:func:`answer_type` of the request's).
        status: the HTTP status of the answer.
        reason: a short name of the failure, e.g. ``queue_full`` (written upper case).
        message: the developer-facing text (``Status.message``).

    Example:
        >>> body = otlp_error("application/json", 503, "queue_full", "retry after 1s")
        >>> json.loads(body)["details"][0]["reason"]
        'QUEUE_FULL'
    """
    from google.protobuf import json_format
    from google.rpc import error_details_pb2, status_pb2

    answer = status_pb2.Status(code=_GRPC_CODES.get(status, 2), message=message)  # 2: UNKNOWN
    info = error_details_pb2.ErrorInfo(reason=reason.upper(), domain="otelhooks")
    answer.details.add().Pack(info)
    if status == 400:
        violation = error_details_pb2.BadRequest.FieldViolation(field="", description=message)
        answer.details.add().Pack(error_details_pb2.BadRequest(field_violations=[violation]))
    if content_type == PROTOBUF:
        encoded: bytes = answer.SerializeToString()
        return encoded
    return json.dumps(json_format.MessageToDict(answer)).encode()
