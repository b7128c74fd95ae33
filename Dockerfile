# tollgate's container image: built in one stage (native modules compile there), run in another
# as the unprivileged `node` user. Data (SQLite, .eml mail) and GGUF models live on volumes.
#   docker build -t tollgate .
# It serves on every interface (HOST=0.0.0.0) with NODE_ENV=production, where start-up refuses the
# sandbox payment processor of config/default.yaml (it credits wallets without charging anyone): run
# it with config/production.yaml (Stripe) and Stripe's two secrets, in an env file (tollgate.env):
#   CONFIG=/app/config/production.yaml
#   STRIPE_SECRET_KEY=sk_live_…
#   STRIPE_WEBHOOK_SECRET=whsec_…
#   PUBLIC_URL=https://api.example.com
#   ADMIN_TOKEN=a-secret-of-16-or-more-characters
# then fetch the models once into their volume, and start:
#   docker run --rm --env-file tollgate.env -v tollgate-models:/app/models tollgate npx tollgate models pull --defaults
#   docker run -d -p 8080:8080 --env-file tollgate.env -v tollgate-data:/data -v tollgate-models:/app/models tollgate
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# npm ci's prepare script builds the dashboard when its sources are there; here they come next.
RUN npm ci
COPY . .
RUN npm run dashboard:build
# The server compiled to plain JavaScript under build/ (build/current), as `npm start` does; the CLI (npx tollgate)
# runs its sources through tsx. Everything else the tests and the dashboard build need goes.
RUN node --import tsx src/build.ts
RUN npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATABASE_URL=sqlite:/data/tollgate.db \
    MODELS_DIR=/app/models
WORKDIR /app
COPY --from=build --chown=node:node /app /app
RUN mkdir -p /data /app/models && chown node:node /data /app/models
USER node
VOLUME ["/data", "/app/models"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--enable-source-maps", "build/current/src/main.js"]
