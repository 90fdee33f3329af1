package pipeline

// ErrWorkerStopped is the type of a model attempt cut short because its
// worker is stopping (the shutdown grace ran out, the activity's context
// was cancelled). It says nothing about the model: the workflow asks the
// same model again, as after a lost worker, and neither cools it down nor
// falls back. It is non-retryable on the activity so that the workflow,
// not the retry policy, decides the next attempt (the stopping worker's
// preview details ride with it).
const ErrWorkerStopped = "WorkerStopped"
