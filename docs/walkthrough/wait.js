// Waits longer than the wall clock (--timeout-ms) allows.
await new Promise((resolve) => setTimeout(resolve, 60000));
return "never";
