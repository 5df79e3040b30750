import htcondor2

jel = htcondor2.JobEventLog("job.log")
for e in jel.events(stop_after=0):
    if e.type == htcondor2.JobEventType.FILE_TRANSFER:
        print(htcondor2.FileTransferEventType(e["type"]))
