const settings = JSON.parse("{ not json");
return settings;
