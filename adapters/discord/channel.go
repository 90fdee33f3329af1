package discord

// Channel is the channel name of Discord sessions, in their keys,
// settings and logs.
const Channel = "discord"
