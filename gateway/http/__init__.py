"""The entrances: the Starlette app and its routes, the SSE responses, the AI SDK 7 WebSocket
transport, request intake and authentication. What a request becomes is decided below, in
:mod:`chunkbridge.gateway.service` and :mod:`chunkbridge.gateway.turn`."""
