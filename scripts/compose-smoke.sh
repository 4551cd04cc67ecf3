#!/usr/bin/env bash
# Brings the docker compose stack up, syncs a session with a fresh key,
# finds it by search, and tears the stack down. Needs a Docker engine.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! docker info >/dev/null 2>&1; then
	echo "compose-test: no Docker engine answers; nothing to run" >&2
	exit 1
fi
export COMPOSE_PROJECT_NAME=hindsight-smoke HINDSIGHT_PUBLISH=127.0.0.1:17420
trap 'docker compose down -v >/dev/null 2>&1 || true' EXIT
docker compose up -d --build --wait
docker compose exec -T hindsight /hindsight users create smoke
KEY=$(docker compose exec -T hindsight /hindsight keys create --user smoke | tail -1 | tr -d '\r')
U=http://127.0.0.1:17420
curl -fsS "$U/health"
curl -fsS -H "Authorization: Bearer $KEY" -X POST "$U/sync/batch" \
	-d '{"sessions":[{"externalId":"smoke-1","title":"compose smoke test"}],"messages":[{"sessionExternalId":"smoke-1","externalId":"m1","role":"user","textContent":"the flux capacitor overheats"}]}'
for _ in $(seq 1 50); do
	if curl -fsS -H "Authorization: Bearer $KEY" "$U/api/search?q=capacitor" | grep -q smoke-1; then
		echo "compose-test: OK"
		exit 0
	fi
	sleep 0.2
done
echo "compose-test: the synced session was not found by search" >&2
exit 1
