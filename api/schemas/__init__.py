"""Request and response bodies of the API, one module per topic (the OpenAPI text comes
from here). Response models mirror the domain objects' ``to_json`` forms field by field;
``tests/unit/test_response_models.py`` holds them to it."""
