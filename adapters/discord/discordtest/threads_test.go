package discordtest_test

import (
	"testing"

	"github.com/replyflow/replyflow/adapters/discord/discordtest"
)

func TestActiveThreadsAreTheGuildsThreads(t *testing.T) {
	fake, dg := start(t, discordtest.Options{})
	list, err := dg.GuildThreadsActive(guildID)
	if err != nil || len(list.Threads) != 1 || list.Threads[0].ID != thread || list.Threads[0].ParentID != general || !list.Threads[0].IsThread() {
		t.Errorf("active threads = %+v, %v; want the thread in general", list, err)
	}
	if _, err := dg.GuildThreadsActive("100000000000000999"); !hasCode(err, 404, 10004) {
		t.Errorf("an unknown guild: err = %v, want 404 10004", err)
	}
	if calls := fake.Calls(discordtest.RouteActiveThreads); len(calls) != 2 || calls[0].Vars["guild"] != guildID {
		t.Errorf("calls = %+v, want both recorded", calls)
	}
}
