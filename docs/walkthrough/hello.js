// The script's last `return` is its result; console.* lines are its logs.
console.log("hello from the sandbox");
const squares = [1, 2, 3].map((n) => n * n);
return { squares, sum: squares.reduce((a, b) => a + b, 0) };
