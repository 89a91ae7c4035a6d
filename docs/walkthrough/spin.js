// Never ends on its own: the CPU budget (--cpu-ms) does.
let n = 0;
while (true) n++;
