import htcondor2


c = htcondor2.Collector()
query = "'Machine == 'ep.condor.example'"
# The current locate projection.
projection = ['Name', 'Machine', 'AddressV1', 'MyAddress', 'CondorVersion', 'CondorPlatform']
r = c.query( htcondor2.AdType.Startd, query, projection )
# query() is more like locateAll(), in that it returns a list.
print(r[0])
