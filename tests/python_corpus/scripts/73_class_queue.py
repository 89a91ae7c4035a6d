# A small job queue class with priorities.
class Queue:
    def __init__(self):
        self.items = []
        self.counter = 0

    def push(self, job, prio):
        self.counter += 1
        self.items.append((prio, self.counter, job))
        self.items.sort()

    def pop(self):
        return self.items.pop(0)[2]

q = Queue()
q.push("email", 2)
q.push("backup", 1)
q.push("report", 2)
q.push("alert", 0)
order = []
while q.items:
    order.append(q.pop())
order
