// Package session is the conversation session as one loop of parts that
// answer events.
//
// A session serves one conversation (a pipeline.SessionKey). Its shape:
//
//   - Events (events.go) are everything that happens to a session: a
//     message arrived, a debounce window closed, a model step answered, a
//     chunk was delivered, a reaction was applied, a clear is due, a
//     decision was taken, a heartbeat ticked, a turn ended.
//   - Parts are reducers. Each owns a slice of State and answers events
//     with new state and a list of Effects (effects.go). A part holds no
//     other part and no callback into one: what one part tells another is
//     an Emit effect, an event the loop routes. Parts never block, read
//     the clock only through Env, and start nothing themselves, so their
//     tests are tables run without the SDK's test environment.
//   - The loop (loop.go) takes signals and updates as events, routes every
//     event to the parts in one switch, and hands their effects to the
//     runner.
//   - The runner (runner.go) is the only code that starts activities,
//     local activities, timers and coroutines. Each effect's outcome comes
//     back to the loop as an event, so every interleaving of a session is
//     decided in that one file.
//
// The package must not touch the network, the clock or a platform SDK:
// it is workflow code, replayed from history on any worker. Platform rules
// (limits, markup) belong to the adapters, reached only through
// activities.
package session
