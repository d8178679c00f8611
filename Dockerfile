# chunkbridge gateway: docker build -t chunkbridge . && docker run -p 8000:8000 \
#   -e CHUNKBRIDGE_DIALECT=agent-ops-v2 \
#   -e CHUNKBRIDGE_UPSTREAM='ws://backend:9000/sessions/{session_id}/ws' chunkbridge
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    CHUNKBRIDGE_HOST=0.0.0.0 \
    CHUNKBRIDGE_PORT=8000 \
    CHUNKBRIDGE_LOG_FORMAT=json

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
COPY protocol_specs ./protocol_specs
COPY translators ./translators
COPY gateway ./gateway
RUN pip install '.[postgres,mcp]' && useradd --system --uid 10001 --no-create-home chunkbridge

USER chunkbridge
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 \
  CMD python -c "import os,urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('CHUNKBRIDGE_PORT','8000'), timeout=2)" || exit 1
STOPSIGNAL SIGTERM
CMD ["chunkbridge", "serve"]
