# Invert a mapping of users to teams into teams to sorted users.
membership = {"ann": "infra", "bob": "web", "cid": "infra", "dee": "data", "eve": "web"}
teams = {}
for user, team in membership.items():
    teams.setdefault(team, []).append(user)
summary = {team: sorted(users) for team, users in sorted(teams.items())}
largest = max(summary, key=lambda t: len(summary[t]))
{"teams": summary, "largest": largest}
