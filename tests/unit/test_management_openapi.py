"""The OpenAPI document lists every management route (S11), with the models the SDK reads."""

import json

from contextos.api.app import app

ROUTES = {
    ("/memories", "get"),
    ("/memories/{memory_id}", "patch"),
    ("/memories/{memory_id}", "delete"),
    ("/memories/{memory_id}/restore", "post"),
    ("/memories/{memory_id}/graph", "get"),
    ("/graph", "get"),
    ("/documents", "get"),
    ("/documents/{document_id}", "delete"),
    ("/uploads", "post"),
}


def test_every_new_route_is_in_the_openapi_document():
    schema = json.loads(app.get_openapi_json_schema())
    present = {(path, method) for path, ops in schema["paths"].items() for method in ops}
    assert present >= ROUTES
    components = schema["components"]["schemas"]
    assert {"MemoryPage", "MemoryPatch", "MemoryGraph", "DocumentForgotten", "UploadTicket", "ScopeFilter"} <= set(
        components
    )
    context = components["ContextRequest"]["properties"]
    assert {"scope", "include_history"} <= set(context)
