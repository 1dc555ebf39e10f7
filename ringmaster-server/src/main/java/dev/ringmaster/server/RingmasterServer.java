package dev.ringmaster.server;

import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.generation.RequestRegistry;
import dev.ringmaster.server.http.ApiKeyCheck;
import dev.ringmaster.server.http.ConnectionWatch;
import dev.ringmaster.server.http.Cors;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Http10Connections;
import dev.ringmaster.server.http.Shell;
import dev.ringmaster.server.metrics.ServerMetrics;
import dev.ringmaster.server.nativeapi.GenerateEndpoint;
import dev.ringmaster.server.nativeapi.HealthEndpoints;
import dev.ringmaster.server.nativeapi.ServerInfoEndpoint;
import dev.ringmaster.server.nativeapi.SglangEndpoints;
import dev.ringmaster.server.nativeapi.TokenizeEndpoints;
import dev.ringmaster.server.openai.ChatCompletionsEndpoint;
import dev.ringmaster.server.openai.CompletionsEndpoint;
import dev.ringmaster.server.openai.ModelsEndpoint;
import io.helidon.http.DirectHandler;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http1.Http1ConnectionSelector;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Ringmaster HTTP server: OpenAI-compatible and native endpoints plus metrics, on Helidon SE
 * (one virtual thread per request; the model stays on the engine thread).
 */
public final class RingmasterServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RingmasterServer.class.getName());
  private static final Set<String> KNOWN_PATHS =
      Set.of(
          "/v1/completions",
          "/v1/chat/completions",
          "/v1/models",
          "/generate",
          "/tokenize",
          "/detokenize",
          "/health",
          "/health_generate",
          "/get_server_info",
          "/server_info",
          "/get_model_info",
          "/abort_request",
          "/flush_cache",
          "/version",
          "/metrics");

  private final ServerContext ctx;
  private final ConnectionWatch connections = new ConnectionWatch();
  private final Cors cors;
  private final WebServer web;
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile boolean stopped;

  private RingmasterServer(ServerContext ctx) {
    this.ctx = ctx;
    ServerConfig cfg = ctx.config();
    this.cors = new Cors(cfg.allowedOrigins());
    DirectHandler transport = Shell.transportErrors(cfg.maxRequestBytes());
    Http1ConnectionSelector http11 =
        Http1ConnectionSelector.builder().config(Http1Config.create()).build();
    this.web =
        WebServer.builder()
            .host(cfg.host())
            .port(cfg.port())
            .shutdownHook(false)
            .maxPayloadSize(cfg.maxRequestBytes())
            // Stream events are small writes: with Nagle's algorithm on, one waits for the client's
            // delayed ACK of the one before (up to 40 ms on Linux), the first token's included.
            .connectionOptions(o -> o.tcpNoDelay(true))
            // Ours come first: HTTP/1.1 through the watch, then HTTP/1.0 (Helidon refuses it).
            .addConnectionSelector(connections.watch(http11))
            .addConnectionSelector(Http10Connections.selector(connections, http11))
            .directHandlers(
                d -> {
                  for (DirectHandler.EventType t : DirectHandler.EventType.values()) {
                    d.addHandler(t, transport);
                  }
                })
            .routing(this::routes)
            .build();
  }

  /**
   * Starts serving a model; returns once the port is bound.
   *
   * @throws IllegalStateException naming the address when it cannot be bound (a port in use)
   */
  public static RingmasterServer start(ServingModel model, ServerConfig config) {
    ServerMetrics metrics = new ServerMetrics(model.name(), model.engine());
    RingmasterServer s =
        new RingmasterServer(new ServerContext(model, config, metrics, new RequestRegistry()));
    s.web.start();
    if (s.web.port() < 0) {
      // The listener logged why; without this check the server would report port -1 and idle.
      s.web.stop();
      throw new IllegalStateException(
          "cannot listen on "
              + config.host()
              + ":"
              + config.port()
              + " (is the port in use by another server?)");
    }
    return s;
  }

  private void routes(HttpRouting.Builder r) {
    String key = ctx.config().apiKey();
    HealthEndpoints health = new HealthEndpoints(ctx);
    TokenizeEndpoints tokenize = new TokenizeEndpoints(ctx);
    ServerMetrics metrics = ctx.metrics();
    r.get("/health", handler(health.health()));
    r.post("/v1/completions", handler(ApiKeyCheck.require(key, new CompletionsEndpoint(ctx))));
    r.post(
        "/v1/chat/completions",
        handler(ApiKeyCheck.require(key, new ChatCompletionsEndpoint(ctx))));
    ModelsEndpoint models = new ModelsEndpoint(ctx);
    SglangEndpoints sglang = new SglangEndpoints(ctx);
    ServerInfoEndpoint info = new ServerInfoEndpoint(ctx);
    r.options(handler(cors.preflight()));
    r.get("/v1/models", handler(ApiKeyCheck.require(key, models)));
    r.get("/v1/models/{id}", handler(ApiKeyCheck.require(key, models.retrieve())));
    r.get("/get_model_info", handler(ApiKeyCheck.require(key, sglang.modelInfo())));
    r.get("/version", handler(ApiKeyCheck.require(key, sglang.version())));
    r.post("/abort_request", handler(ApiKeyCheck.require(key, sglang.abortRequest())));
    r.post("/flush_cache", handler(ApiKeyCheck.require(key, sglang.flushCache())));
    r.get("/server_info", handler(ApiKeyCheck.require(key, info)));
    r.post("/generate", handler(ApiKeyCheck.require(key, new GenerateEndpoint(ctx))));
    r.post("/tokenize", handler(ApiKeyCheck.require(key, tokenize.tokenize())));
    r.post("/detokenize", handler(ApiKeyCheck.require(key, tokenize.detokenize())));
    r.get("/health_generate", handler(ApiKeyCheck.require(key, health.healthGenerate())));
    r.get("/get_server_info", handler(ApiKeyCheck.require(key, info)));
    r.get(
        "/metrics",
        handler(
            ApiKeyCheck.require(
                key, ex -> ex.send(200, ServerMetrics.CONTENT_TYPE, metrics.scrape()))));
    r.any(
        handler(
            ex -> {
              if (KNOWN_PATHS.contains(ex.path())) {
                throw new ApiException(
                    405,
                    "invalid_request_error",
                    null,
                    "method_not_allowed",
                    "method not allowed on " + ex.path(),
                    0);
              }
              throw ApiException.notFound(null, "not_found", "no such endpoint: " + ex.path());
            }));
  }

  private io.helidon.webserver.http.Handler handler(Endpoint e) {
    Endpoint withCors =
        ex -> {
          cors.decorate(ex);
          e.handle(ex);
        };
    io.helidon.webserver.http.Handler inner =
        Shell.wrap(withCors, ctx.config().maxRequestBytes(), connections);
    return (req, res) -> {
      inFlight.incrementAndGet();
      try {
        inner.handle(req, res);
      } finally {
        inFlight.decrementAndGet();
      }
    };
  }

  /** The bound port. */
  public int port() {
    return web.port();
  }

  /** The base URL, e.g. {@code http://127.0.0.1:30000}. */
  public String url() {
    String host = ctx.config().host();
    if (host.contains(":")) {
      host = "[" + host + "]";
    }
    return "http://" + host + ":" + port();
  }

  /** Endpoint context (model, limits, metrics). */
  public ServerContext context() {
    return ctx;
  }

  /**
   * Graceful shutdown: refuse new requests (503), let running ones finish within the configured
   * timeout, abort the rest (streams end with finish reason "abort"), give handlers a moment to
   * write their last bytes, then close the listener. Idempotent.
   */
  public synchronized void shutdown() {
    if (stopped) {
      return;
    }
    stopped = true;
    var engine = ctx.model().engine();
    engine.stopAccepting();
    try {
      if (!engine.awaitIdle(ctx.config().shutdownTimeout())) {
        LOG.log(System.Logger.Level.WARNING, "shutdown timeout: aborting unfinished requests");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    engine.close();
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (inFlight.get() > 0 && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    web.stop();
  }

  /** Same as {@link #shutdown}. */
  @Override
  public void close() {
    shutdown();
  }
}
