"""The per-user daemon: one process serves every editor of a user (gopls's -remote=auto design).

- `tokend serve` runs `listener.run_daemon(...)`: a unix socket in the user's private runtime
  dir (paths.py), optionally loopback TCP with a token, one pygls server per connection built by
  a pluggable `connection_factory(conn)` (conn.py), a bounded outbox per connection (outbox.py),
  and exit after an idle timeout.
- `tokend lsp` runs `forwarder.forward(remote)`: relays stdio to the daemon, starting it first
  if needed, under a lock so concurrent editors start exactly one (spawn.py).

This package imports nothing heavy on purpose: the forwarder imports only paths and spawn.
"""
