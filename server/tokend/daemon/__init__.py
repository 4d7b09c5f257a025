"""The per-user daemon: one process serves every editor of a user (gopls's -remote=auto design).

- `tokend serve` runs `listener.run_daemon(...)`: a unix socket in the user's private runtime
  dir (paths.py), optionally loopback TCP with a token, one pygls server per connection built by
  a pluggable `connection_factory(conn)` (conn.py; served by serve_conn.py), a bounded outbox
  per connection (outbox.py), and exit after an idle timeout.
- `tokend lsp` runs `forwarder.forward(remote)`: relays stdio to the daemon, starting it first
  if needed, under a lock so concurrent editors start exactly one (spawn.py).

Writing a connection factory (the only seam):

    def connection_factory(conn: Connection) -> LanguageServer:
        server = create_server(app, DaemonHost(conn))  # app: service/app.py's open_app
        conn.add_close_callback(server.unwatch_all)  # the client may vanish without shutdown
        return server

- The server's protocol must have an `on_exit` attribute (derive from tokend.lsp.protocol.ConnectionProtocol, or
  any protocol with the same hook): the daemon sets it so `exit` closes only this connection.
  A protocol without it is refused, since its `exit` would end the whole daemon.
- The factory is called when the connection's first acceptable message arrives (after
  authentication on TCP), in the connection's own task: a connection that only sends garbage
  costs no server. Frames are read and checked by the daemon (frames.py, dispatch.py), with
  backpressure and limits per connection (serve_conn.py).
- TCP auth needs nothing in the handlers: until `initialize` carries the right
  initializationOptions.authToken, no message reaches the server; the client gets an
  Unauthorized (-33007) reply and is disconnected (dispatch.authorize_initialize).
- Requests in flight are counted when the protocol reports its replies (ConnectionProtocol's
  `on_response`): the idle exit and SIGTERM wait for them.
- conn.client_name (clientInfo.name) is filled in before the initialize handler runs;
  conn.session_id is the slot the session methods set; conn.daemon.status() is daemon/status;
  `with conn.daemon.busy():` around writes and compactions defers the idle exit;
  conn.registry.notify_all(method, params, session_id=...) fans a notification out.

This package imports nothing heavy on purpose: the forwarder imports only paths, spawn and
exit_watch. Process settings (logs, memory, the collector) are in process.py.
"""
